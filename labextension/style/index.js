import './base.css';
import './reminders.css';
